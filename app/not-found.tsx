import Link from "next/link";

export default function NotFound() {
  return (
    <main className="mx-auto mt-24 max-w-md text-center">
      <h1 className="text-2xl font-semibold">Not found</h1>
      <p className="mt-2 text-slate-600">There is nothing here, or it belongs to another tenant.</p>
      <Link href="/exports" className="mt-4 inline-block text-indigo-700 underline">
        Back to exports
      </Link>
    </main>
  );
}
