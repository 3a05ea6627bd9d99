import type { Metadata } from "next";
import { headers } from "next/headers";
import { ApiReference } from "@/components/api-reference";
import { scalarConfiguration } from "@/lib/http/api-reference";

export const metadata: Metadata = { title: "API reference" };

/** The interactive reference of the REST API (no sign-in: the document it renders is public). */
export default async function ApiReferencePage() {
  const nonce = (await headers()).get("x-nonce") ?? undefined;
  return (
    <main>
      <h1 className="sr-only">Conveyor API reference</h1>
      <p className="border-b border-slate-200 px-4 py-2 text-sm text-slate-600">
        The OpenAPI 3.1 document:{" "}
        <a href="/api/v1/openapi.json" className="text-indigo-700 underline">
          /api/v1/openapi.json
        </a>
        . Calls made here use your session; elsewhere send <code>Authorization: Bearer &lt;token&gt;</code> (
        <a href="/settings" className="text-indigo-700 underline">
          API tokens
        </a>
        ).
      </p>
      <ApiReference nonce={nonce} configuration={scalarConfiguration} />
    </main>
  );
}
