import type { Metadata } from "next";
import Link from "next/link";
import { PasswordForm } from "@/components/password-form";
import { TokensPanel } from "@/components/tokens-panel";
import { MIN_PASSWORD_LENGTH } from "@/lib/auth/password";

export const metadata: Metadata = { title: "Settings" };

export default function SettingsPage() {
  return (
    <div className="space-y-8">
      <h1 className="text-2xl font-semibold">Settings</h1>
      <section aria-labelledby="tokens-heading" className="space-y-4">
        <h2 id="tokens-heading" className="text-xl font-semibold">
          API tokens
        </h2>
        <p className="text-sm text-slate-600">
          Tokens call the REST API as you, within your tenant (a platform admin&apos;s, across tenants):{" "}
          <code>Authorization: Bearer &lt;token&gt;</code>. A read-only token may only read; every token can be given an
          expiry. Every route, with its parameters and answers, is in the{" "}
          <Link href="/docs/api" className="text-indigo-700 underline">
            API reference
          </Link>{" "}
          (the OpenAPI document: <code>/api/v1/openapi.json</code>).
        </p>
        <TokensPanel />
      </section>
      <section aria-labelledby="webhooks-heading" className="space-y-4">
        <h2 id="webhooks-heading" className="text-xl font-semibold">
          Webhooks
        </h2>
        <p className="text-sm text-slate-600">
          Signed HTTP calls to your URLs when an export is ready or a job ends:{" "}
          <Link href="/settings/webhooks" className="text-indigo-700 underline">
            Manage webhooks
          </Link>
          .
        </p>
      </section>
      <section aria-labelledby="password-heading" className="space-y-4">
        <h2 id="password-heading" className="text-xl font-semibold">
          Password
        </h2>
        <p className="text-sm text-slate-600">After a change every session signs in again, this one included.</p>
        <PasswordForm minLength={MIN_PASSWORD_LENGTH} />
      </section>
    </div>
  );
}
