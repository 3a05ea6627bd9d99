import type { Metadata } from "next";
import Link from "next/link";
import { redirect } from "next/navigation";
import { acceptInvite, getInviteInfo, type InviteInfo } from "@/lib/auth/accounts";
import { MIN_PASSWORD_LENGTH } from "@/lib/auth/password";
import { AppError } from "@/lib/errors";
import { spendAddressBudget } from "@/lib/http/address-limit";
import "@/lib/workloads";

export const metadata: Metadata = { title: "Accept your invitation" };

async function accept(formData: FormData) {
  "use server";
  const token = String(formData.get("token") ?? "");
  const password = String(formData.get("password") ?? "");
  if (formData.get("confirm") !== null && formData.get("confirm") !== password) {
    redirect(`/invite/${encodeURIComponent(token)}?error=${encodeURIComponent("confirm: the two passwords differ")}`);
  }
  try {
    await spendAddressBudget();
    await acceptInvite({
      token,
      password,
      ...(formData.get("name") !== null ? { name: String(formData.get("name")) } : {}),
    });
  } catch (err) {
    if (err instanceof AppError) {
      const field = err.fields?.[0];
      const message = field ? `${field.path}: ${field.message}` : err.message;
      redirect(`/invite/${encodeURIComponent(token)}?error=${encodeURIComponent(message)}`);
    }
    throw err;
  }
  redirect("/login?welcome=1");
}

const input = "mt-1 block w-full rounded border border-slate-300 px-3 py-2";

export default async function InvitePage({
  params,
  searchParams,
}: {
  params: Promise<{ token: string }>;
  searchParams: Promise<{ error?: string }>;
}) {
  const { token } = await params;
  const { error } = await searchParams;
  let info: InviteInfo | null = null;
  let problem: string | null = null;
  try {
    await spendAddressBudget();
    info = await getInviteInfo(token);
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    problem = err.code === "not_found" ? "This invitation link is not valid." : err.message;
  }
  const [field, message] = error?.includes(": ") ? error.split(/: (.*)/s) : [null, error];
  return (
    <main className="mx-auto mt-16 max-w-md rounded-lg border border-slate-200 bg-white p-8 shadow-sm">
      <h1 className="mb-2 text-2xl font-semibold">Join Conveyor</h1>
      {problem || !info ? (
        <>
          <p role="alert" className="rounded bg-amber-50 px-3 py-2 text-sm text-amber-900">
            {problem}
          </p>
          <p className="mt-4 text-sm">
            Ask whoever invited you for a new link, or{" "}
            <Link className="text-indigo-700 underline" href="/login">
              sign in
            </Link>
            .
          </p>
        </>
      ) : (
        <>
          <p className="mb-6 text-sm text-slate-700">
            {info.platformAdmin
              ? `You are invited as a platform admin, as ${info.email}.`
              : `You are invited to ${info.tenant} as ${info.role === "operator" ? "an operator" : "a member"}, as ${info.email}.`}{" "}
            {info.hasAccount
              ? "You already have an account: confirm with its password."
              : `Choose your name and a password of at least ${MIN_PASSWORD_LENGTH} characters.`}
          </p>
          {message && !field && (
            <p role="alert" className="mb-4 rounded bg-red-50 px-3 py-2 text-sm text-red-700">
              {message}
            </p>
          )}
          <form action={accept} className="space-y-4">
            <input type="hidden" name="token" value={token} />
            {!info.hasAccount && (
              <label className="block text-sm font-medium">
                Your name
                <input
                  name="name"
                  required
                  maxLength={200}
                  autoComplete="name"
                  className={input}
                  aria-invalid={field === "name"}
                  aria-describedby={field === "name" ? "name-error" : undefined}
                />
                {field === "name" && (
                  <span id="name-error" className="text-xs text-red-700">
                    {message}
                  </span>
                )}
              </label>
            )}
            <label className="block text-sm font-medium">
              {info.hasAccount ? "Your password" : "Password"}
              <input
                name="password"
                type="password"
                required
                minLength={info.hasAccount ? 1 : MIN_PASSWORD_LENGTH}
                maxLength={200}
                autoComplete={info.hasAccount ? "current-password" : "new-password"}
                className={input}
                aria-invalid={field === "password"}
                aria-describedby={field === "password" ? "password-error" : undefined}
              />
              {field === "password" && (
                <span id="password-error" className="text-xs text-red-700">
                  {message}
                </span>
              )}
            </label>
            {!info.hasAccount && (
              <label className="block text-sm font-medium">
                The same password again
                <input
                  name="confirm"
                  type="password"
                  required
                  maxLength={200}
                  autoComplete="new-password"
                  className={input}
                  aria-invalid={field === "confirm"}
                  aria-describedby={field === "confirm" ? "confirm-error" : undefined}
                />
                {field === "confirm" && (
                  <span id="confirm-error" className="text-xs text-red-700">
                    {message}
                  </span>
                )}
              </label>
            )}
            <button
              type="submit"
              className="w-full rounded bg-indigo-700 px-4 py-2 font-medium text-white hover:bg-indigo-600"
            >
              {info.hasAccount ? "Join" : "Set my password"}
            </button>
          </form>
        </>
      )}
    </main>
  );
}
