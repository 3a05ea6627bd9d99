"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { createExportLink, deleteExport, fetchExportLinks, jobKeys, revokeExportLink } from "@/lib/client/api";
import { formatTime } from "@/lib/client/format";

/** Share an export's file by a short-lived link, revoke links, or delete the export early. */
export function ExportLinks({ jobId }: { jobId: string }) {
  const qc = useQueryClient();
  const key = ["exports", "links", jobId];
  const links = useQuery({ queryKey: key, queryFn: () => fetchExportLinks(jobId) });
  const [created, setCreated] = useState<string | null>(null);
  const [copied, setCopied] = useState(false);
  const refresh = () => {
    void qc.invalidateQueries({ queryKey: key });
    void qc.invalidateQueries({ queryKey: jobKeys.all });
  };
  const create = useMutation({
    mutationFn: () => createExportLink(jobId),
    onSuccess: (l) => {
      setCreated(`${window.location.origin}${l.url}`);
      setCopied(false);
      refresh();
    },
  });
  const revoke = useMutation({ mutationFn: (id: string) => revokeExportLink(jobId, id), onSuccess: refresh });
  const remove = useMutation({ mutationFn: () => deleteExport(jobId), onSuccess: refresh });
  const error = create.error ?? revoke.error ?? remove.error;

  return (
    <div className="mt-4 space-y-3 border-t border-slate-100 pt-4 text-sm">
      <div className="flex flex-wrap items-center gap-3">
        <button
          type="button"
          onClick={() => create.mutate()}
          disabled={create.isPending}
          className="rounded border border-slate-300 px-3 py-1"
        >
          Create a download link (15 minutes)
        </button>
        <button
          type="button"
          onClick={() => {
            if (window.confirm("Delete this export's files now? Its links stop working.")) remove.mutate();
          }}
          disabled={remove.isPending}
          className="rounded border border-red-300 px-3 py-1 text-red-700"
        >
          Delete export
        </button>
        {error && (
          <span role="alert" className="text-red-700">
            {error.message}
          </span>
        )}
      </div>
      {created && (
        <p role="status" className="break-all">
          Link:{" "}
          <a href={created} data-testid="new-link" className="font-mono text-indigo-700 underline">
            {created}
          </a>{" "}
          <button
            type="button"
            className="rounded border border-slate-300 px-2 py-0.5 text-xs"
            onClick={() =>
              void navigator.clipboard
                .writeText(created)
                .then(() => setCopied(true))
                .catch(() => setCopied(false))
            }
          >
            {copied ? "Copied" : "Copy"}
          </button>
          <span className="text-slate-500"> — anyone with it can download until it expires; it is shown only now.</span>
        </p>
      )}
      {(links.data?.links.length ?? 0) > 0 && (
        <ul className="space-y-1" aria-label="Download links">
          {links.data!.links.map((l) => {
            const state = l.revokedAt ? "revoked" : new Date(l.expiresAt) <= new Date() ? "expired" : "active";
            return (
              <li key={l.id} data-testid="export-link" className="flex flex-wrap items-center gap-3">
                <span className="font-mono text-xs text-slate-500">{l.id.slice(0, 8)}</span>
                <span data-testid="link-state">{state}</span>
                <span className="text-slate-500">
                  {state === "active" ? `until ${formatTime(l.expiresAt)}` : ""} · downloaded {l.downloadCount}×
                </span>
                {state === "active" && (
                  <button type="button" onClick={() => revoke.mutate(l.id)} className="text-red-700 underline">
                    Revoke
                  </button>
                )}
              </li>
            );
          })}
        </ul>
      )}
    </div>
  );
}
