import type { Metadata } from "next";
import { redirect } from "next/navigation";
import { AuthError } from "next-auth";
import { auth, signIn } from "@/lib/http/auth";

export const metadata: Metadata = { title: "Sign in" };

async function login(formData: FormData) {
  "use server";
  try {
    await signIn("credentials", {
      email: String(formData.get("email") ?? ""),
      password: String(formData.get("password") ?? ""),
      redirectTo: "/exports",
    });
  } catch (err) {
    // signIn signals success by throwing Next's redirect; only AuthError means bad credentials.
    if (err instanceof AuthError) redirect("/login?error=invalid");
    throw err;
  }
}

export default async function LoginPage({ searchParams }: { searchParams: Promise<{ error?: string }> }) {
  const session = await auth();
  if (session?.user?.id) redirect("/exports");
  const { error } = await searchParams;
  return (
    <main className="mx-auto mt-24 max-w-sm rounded-lg border border-slate-200 bg-white p-8 shadow-sm">
      <h1 className="mb-1 text-2xl font-semibold">Sign in to Conveyor</h1>
      <p className="mb-6 text-sm text-slate-500">Long-running work on Postgres</p>
      {error && (
        <p role="alert" className="mb-4 rounded bg-red-50 px-3 py-2 text-sm text-red-700">
          Wrong e-mail or password.
        </p>
      )}
      <form action={login} className="space-y-4">
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
