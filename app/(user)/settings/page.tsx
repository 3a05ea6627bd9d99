import type { Metadata } from "next";
import { TokensPanel } from "@/components/tokens-panel";

export const metadata: Metadata = { title: "API tokens" };

export default function SettingsPage() {
  return (
    <div className="space-y-6">
      <h1 className="text-2xl font-semibold">API tokens</h1>
      <p className="text-sm text-slate-600">
        Tokens call the REST API as you, within your tenant (a platform admin&apos;s, across tenants):{" "}
        <code>Authorization: Bearer &lt;token&gt;</code>.
      </p>
      <TokensPanel />
    </div>
  );
}
