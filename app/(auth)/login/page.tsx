import type { Metadata } from "next";
import { headers } from "next/headers";
import { redirect } from "next/navigation";
import { AuthError } from "next-auth";
import { signInWait } from "@/lib/auth/throttle";
import { signIn } from "@/lib/http/auth";
import { clientAddressFrom } from "@/lib/http/client";
import { sessionPrincipal } from "@/lib/http/principal";

export const metadata: Metadata = { title: "Sign in" };

/** Where to go once signed in: back to an invitation link (`next`), else "/" (app/page.tsx: the overview for operators, their first page for members). Nothing else is followed. */
function nextPath(raw: unknown): string | null {
  return typeof raw === "string" && /^\/invite\/inv_[A-Za-z0-9_-]{1,200}$/.test(raw) ? raw : null;
}

async function login(formData: FormData) {
  "use server";
  const email = String(formData.get("email") ?? "");
  const next = nextPath(formData.get("next"));
  const again = next ? `&next=${encodeURIComponent(next)}` : "";
  try {
    await signIn("credentials", {
      email,
      password: String(formData.get("password") ?? ""),
      redirectTo: next ?? "/",
    });
  } catch (err) {
    // signIn signals success by throwing Next's redirect; only AuthError means a refused sign-in.
    if (err instanceof AuthError) {
      const wait = await signInWait(email, clientAddressFrom(await headers()));
      redirect(wait > 0 ? `/login?error=throttled&wait=${wait}${again}` : `/login?error=invalid${again}`);
    }
    throw err;
  }
}

function waitText(seconds: number): string {
  if (seconds < 90) return `${seconds} seconds`;
  return `${Math.ceil(seconds / 60)} minutes`;
}

export default async function LoginPage({
  searchParams,
}: {
  searchParams: Promise<{ error?: string; wait?: string; welcome?: string; next?: string }>;
}) {
  const { error, wait, welcome, next: rawNext } = await searchParams;
  const next = nextPath(rawNext);
  // A session that ended (password changed since, user removed) signs in again here, with no loop.
  if (await sessionPrincipal()) redirect(next ?? "/");
  const waitSeconds = Math.max(1, Math.min(86_400, Number(wait) || 0));
  return (
    <main className="mx-auto mt-24 max-w-sm rounded-lg border border-slate-200 bg-white p-8 shadow-sm">
      <h1 className="mb-1 text-2xl font-semibold">Sign in to Conveyor</h1>
      <p className="mb-6 text-sm text-slate-500">Long-running work on Postgres</p>
      {welcome && (
        <p role="status" className="mb-4 rounded bg-emerald-50 px-3 py-2 text-sm text-emerald-800">
          Sign in to finish joining: with the password you just chose or, if you already had an account, with its
          password.
        </p>
      )}
      {error === "throttled" ? (
        <p role="alert" className="mb-4 rounded bg-amber-50 px-3 py-2 text-sm text-amber-900">
          Too many failed sign-ins for this account. Wait {waitText(waitSeconds)} before you try again.
        </p>
      ) : error ? (
        <p role="alert" className="mb-4 rounded bg-red-50 px-3 py-2 text-sm text-red-700">
          Wrong e-mail or password.
        </p>
      ) : null}
      <form action={login} className="space-y-4">
        {next && <input type="hidden" name="next" value={next} />}
        <label className="block text-sm font-medium">
          E-mail
          <input
            name="email"
            type="email"
            required
            autoComplete="username"
            className="mt-1 block w-full rounded border border-slate-300 px-3 py-2"
          />
        </label>
        <label className="block text-sm font-medium">
          Password
          <input
            name="password"
            type="password"
            required
            autoComplete="current-password"
            className="mt-1 block w-full rounded border border-slate-300 px-3 py-2"
          />
        </label>
        <button
          type="submit"
          className="w-full rounded bg-indigo-600 px-4 py-2 font-medium text-white hover:bg-indigo-500"
        >
          Sign in
        </button>
      </form>
    </main>
  );
}
