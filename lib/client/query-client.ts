"use client";
/**
 * The browser's react-query client, as components/providers.tsx makes it.
 */
import { QueryClient } from "@tanstack/react-query";
import { jobKeys } from "./api";
import { keepNewerJob } from "./live";

export function createQueryClient(): QueryClient {
  const client = new QueryClient({
    defaultOptions: { queries: { staleTime: 5_000, refetchOnWindowFocus: true, retry: 1 } },
  });
  // Every job's own query, whoever reads or writes it (a fetch, a stream's snapshot, an action's
  // answer): an answer older than the cached job is dropped.
  client.setQueryDefaults(jobKeys.details(), { structuralSharing: keepNewerJob });
  return client;
}
