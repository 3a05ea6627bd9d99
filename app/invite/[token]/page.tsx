import type { Metadata } from "next";
import Link from "next/link";
import { redirect } from "next/navigation";
import { acceptInvite, getInviteInfo, type InviteInfo } from "@/lib/auth/accounts";
import { MIN_PASSWORD_LENGTH } from "@/lib/auth/password";
import type { Principal } from "@/lib/auth/principal";
import { AppError } from "@/lib/errors";
import { spendAddressBudget } from "@/lib/http/address-limit";
import { signOut } from "@/lib/http/auth";
import { sessionPrincipal } from "@/lib/http/principal";
import "@/lib/workloads";

export const metadata: Metadata = { title: "Accept your invitation" };

const back = (token: string, error: string) =>
  `/invite/${encodeURIComponent(token)}?error=${encodeURIComponent(error)}`;
const messageOf = (err: AppError) => {
  const field = err.fields?.[0];
  return field ? `${field.path}: ${field.message}` : err.message;
};

/** Without a session: a new account. The answer is the same when the e-mail has one (its owner signs in instead). */
async function accept(formData: FormData) {
  "use server";
  const token = String(formData.get("token") ?? "");
  const password = String(formData.get("password") ?? "");
  if (formData.get("confirm") !== password) redirect(back(token, "confirm: the two passwords differ"));
  try {
    await spendAddressBudget();
    await acceptInvite({ token, password, name: String(formData.get("name") ?? "") });
  } catch (err) {
    if (err instanceof AppError) redirect(back(token, messageOf(err)));
    throw err;
  }
  redirect(`/login?welcome=1&next=${encodeURIComponent(`/invite/${token}`)}`);
}

/** Signed in as the invitee: join with this account. */
async function join(formData: FormData) {
  "use server";
  const token = String(formData.get("token") ?? "");
  try {
    await acceptInvite({ token }, await sessionPrincipal());
  } catch (err) {
    if (err instanceof AppError) redirect(back(token, messageOf(err)));
    throw err;
  }
  redirect(`/invite/${encodeURIComponent(token)}`);
}

async function switchAccount(formData: FormData) {
  "use server";
  const token = String(formData.get("token") ?? "");
  await signOut({ redirectTo: `/invite/${encodeURIComponent(token)}` });
}

const input = "mt-1 block w-full rounded border border-slate-300 px-3 py-2";
const button = "w-full rounded bg-indigo-700 px-4 py-2 font-medium text-white hover:bg-indigo-600";

function what(info: InviteInfo): string {
  return info.platformAdmin
    ? "as a platform admin"
    : `to ${info.tenant} as ${info.role === "operator" ? "an operator" : "a member"}`;
}

export default async function InvitePage({
  params,
  searchParams,
}: {
  params: Promise<{ token: string }>;
  searchParams: Promise<{ error?: string }>;
}) {
  const { token } = await params;
  const { error } = await searchParams;
  const viewer: Principal | null = await sessionPrincipal();
  let info: InviteInfo | null = null;
  let problem: string | null = null;
  try {
    if (!viewer) await spendAddressBudget();
    info = await getInviteInfo(token, viewer);
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    problem = err.code === "not_found" ? "This invitation link is not valid." : err.message;
  }
  const [field, message] = error?.includes(": ") ? error.split(/: (.*)/s) : [null, error];
  const signInHref = `/login?next=${encodeURIComponent(`/invite/${token}`)}`;
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
      ) : info.state === "accepted" ? (
        <>
          <p role="status" className="mb-6 rounded bg-emerald-50 px-3 py-2 text-sm text-emerald-800">
            You have joined {info.platformAdmin ? "Conveyor as a platform admin" : `${info.tenant}`}, as {info.email}.
          </p>
          <Link className={`${button} block text-center`} href="/exports">
            Continue
          </Link>
        </>
      ) : viewer && viewer.email === info.email ? (
        <>
          <p className="mb-6 text-sm text-slate-700">
            You are invited {what(info)}. You are signed in as {info.email}: join with this account.
          </p>
          {message && (
            <p role="alert" className="mb-4 rounded bg-red-50 px-3 py-2 text-sm text-red-700">
              {message}
            </p>
          )}
          <form action={join}>
            <input type="hidden" name="token" value={token} />
            <button type="submit" className={button}>
              Join
            </button>
          </form>
        </>
      ) : viewer ? (
        <>
          <p className="mb-6 text-sm text-slate-700">
            This invitation is for {info.email}; you are signed in as {viewer.email}. Sign out, then open the link
            again.
          </p>
          <form action={switchAccount}>
            <input type="hidden" name="token" value={token} />
            <button type="submit" className={button}>
              Sign out
            </button>
          </form>
        </>
      ) : (
        <>
          <p className="mb-4 text-sm text-slate-700">
            You are invited {what(info)}, as {info.email}.
          </p>
          <p className="mb-6 rounded border border-slate-200 bg-slate-50 px-3 py-2 text-sm text-slate-700">
            Already have an account for {info.email}?{" "}
            <Link className="font-medium text-indigo-700 underline" href={signInHref}>
              Sign in to join
            </Link>{" "}
            instead of filling this in.
          </p>
          {message && !field && (
            <p role="alert" className="mb-4 rounded bg-red-50 px-3 py-2 text-sm text-red-700">
              {message}
            </p>
          )}
          <h2 className="mb-2 font-medium">New to Conveyor?</h2>
          <p className="mb-4 text-sm text-slate-700">
            Choose your name and a password of at least {MIN_PASSWORD_LENGTH} characters.
          </p>
          <form action={accept} className="space-y-4">
            <input type="hidden" name="token" value={token} />
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
            <label className="block text-sm font-medium">
              Password
              <input
                name="password"
                type="password"
                required
                minLength={MIN_PASSWORD_LENGTH}
                maxLength={200}
                autoComplete="new-password"
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
            <button type="submit" className={button}>
              Create my account
            </button>
          </form>
        </>
      )}
    </main>
  );
}
