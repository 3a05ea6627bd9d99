/** "Load more" under a keyset-paged list (react-query's infinite queries). */
export function LoadMore({
  query,
}: {
  query: { hasNextPage: boolean; isFetchingNextPage: boolean; fetchNextPage: () => Promise<unknown> };
}) {
  if (!query.hasNextPage) return null;
  return (
    <button
      type="button"
      onClick={() => void query.fetchNextPage()}
      disabled={query.isFetchingNextPage}
      className="rounded border border-slate-300 px-4 py-2 text-sm"
    >
      {query.isFetchingNextPage ? "Loading…" : "Load more"}
    </button>
  );
}
