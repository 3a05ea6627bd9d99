import type { Metadata } from "next";
import Link from "next/link";
import { redirect } from "next/navigation";
import { AppError } from "@/lib/errors";
import { spendAddressBudget } from "@/lib/http/address-limit";
import { describeUnsubscribe, unsubscribe } from "@/lib/notifications/service";

export const metadata: Metadata = { title: "Unsubscribe" };

/**
 * A notification mail's unsubscribe link: no sign-in. Opening it asks first (a mail scanner that
 * follows links turns nothing off); the button turns e-mail for that kind off.
 */
async function confirm(formData: FormData) {
  "use server";
  const token = String(formData.get("token") ?? "");
  try {
    await spendAddressBudget();
    await unsubscribe({ token });
  } catch (err) {
    if (err instanceof AppError) redirect(`/unsubscribe/${encodeURIComponent(token)}?error=1`);
    throw err;
  }
  redirect(`/unsubscribe/${encodeURIComponent(token)}?done=1`);
}

export default async function UnsubscribePage({
  params,
  searchParams,
}: {
  params: Promise<{ token: string }>;
  searchParams: Promise<{ done?: string; error?: string }>;
}) {
  const { token } = await params;
  const { done, error } = await searchParams;
  const what = await describeUnsubscribe(decodeURIComponent(token));
  return (
    <main className="mx-auto mt-16 max-w-md space-y-4 rounded-lg border border-slate-200 bg-white p-8 shadow-sm">
      <h1 className="text-2xl font-semibold">E-mail notifications</h1>
      {!what || error ? (
        <p role="alert" className="text-sm text-red-800">
          This unsubscribe link is not valid. Signed in, you can change your e-mail settings on the{" "}
          <Link href="/notifications" className="text-indigo-700 underline">
            notifications page
          </Link>
          .
        </p>
      ) : done ? (
        <p role="status" className="text-sm text-slate-700">
          Done: you get no more e-mail about your {what.label}s. You can turn it on again on the{" "}
          <Link href="/notifications" className="text-indigo-700 underline">
            notifications page
          </Link>
          .
        </p>
      ) : (
        <form action={confirm} className="space-y-4">
          <p className="text-sm text-slate-700">Stop e-mail about your {what.label}s? The app still shows them.</p>
          <input type="hidden" name="token" value={decodeURIComponent(token)} />
          <button
            type="submit"
            className="rounded bg-indigo-700 px-4 py-2 text-sm font-medium text-white hover:bg-indigo-600"
          >
            Turn off e-mail about {what.label}s
          </button>
        </form>
      )}
    </main>
  );
}
