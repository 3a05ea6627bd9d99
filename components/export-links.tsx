"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { refetchAfterChange } from "@/lib/client/refresh";
import { useState } from "react";
import {
  ApiError,
  createExportLink,
  deleteExport,
  fetchExportLinks,
  jobKeys,
  revokeExportLink,
} from "@/lib/client/api";
import { Alert } from "./ui/alert";
import { Button } from "./ui/button";
import { useConfirm } from "./ui/confirm-dialog";
import { CopyButton } from "./ui/copy-button";
import { Time } from "./ui/time";
import { shortId } from "@/lib/ids";

/** Share an export's file by a short-lived link, revoke links, or delete the export early. */
export function ExportLinks({ jobId }: { jobId: string }) {
  const qc = useQueryClient();
  const { confirm, dialog } = useConfirm();
  const key = ["exports", "links", jobId];
  const links = useQuery({ queryKey: key, queryFn: () => fetchExportLinks(jobId) });
  const [created, setCreated] = useState<string | null>(null);
  const refresh = () => {
    void refetchAfterChange(qc, key);
    void refetchAfterChange(qc, jobKeys.all);
  };
  const create = useMutation({
    mutationFn: () => createExportLink(jobId),
    onSuccess: (l) => {
      setCreated(`${window.location.origin}${l.url}`);
      refresh();
    },
  });
  const revoke = useMutation({ mutationFn: (id: string) => revokeExportLink(jobId, id), onSuccess: refresh });
  const remove = useMutation({ mutationFn: () => deleteExport(jobId), onSettled: refresh });
  // A delete that found no files left (deleted meanwhile, or expired) changed nothing: said so, not as a failure.
  const nothingToDelete = remove.error instanceof ApiError && remove.error.code === "gone";
  const error = create.error ?? revoke.error ?? (nothingToDelete ? null : remove.error);

  return (
    <div className="mt-4 space-y-3 border-t border-slate-100 pt-4 text-sm">
      {dialog}
      <div className="flex flex-wrap items-center gap-3">
        <Button onClick={() => create.mutate()} disabled={create.isPending}>
          Create a download link (15 minutes)
        </Button>
        <Button
          variant="danger"
          onClick={async () => {
            const ok = await confirm({
              title: "Delete this export?",
              message: "Delete this export's files now? Its links stop working.",
              confirmLabel: "Delete export",
              variant: "danger",
            });
            if (ok) remove.mutate();
          }}
          disabled={remove.isPending}
        >
          Delete export
        </Button>
        {error && (
          <Alert tone="error" inline>
            {error.message}
          </Alert>
        )}
        {nothingToDelete && (
          <Alert tone="neutral" inline>
            Nothing to delete: its files are already gone.
          </Alert>
        )}
      </div>
      {created && (
        <p role="status" className="break-all">
          Link:{" "}
          <a href={created} data-testid="new-link" className="font-mono text-indigo-700 underline">
            {created}
          </a>{" "}
          <CopyButton text={created} className="text-xs" />
          <span className="text-slate-500"> — anyone with it can download until it expires; it is shown only now.</span>
        </p>
      )}
      {(links.data?.links.length ?? 0) > 0 && (
        <ul className="space-y-1" aria-label="Download links">
          {links.data!.links.map((l) => {
            const state = l.revokedAt ? "revoked" : new Date(l.expiresAt) <= new Date() ? "expired" : "active";
            return (
              <li key={l.id} data-testid="export-link" className="flex flex-wrap items-center gap-3">
                <span className="font-mono text-xs text-slate-500" title={l.id}>
                  {shortId(l.id)}
                </span>
                <span data-testid="link-state">{state}</span>
                <span className="text-slate-500">
                  {state === "active" && (
                    <>
                      until <Time iso={l.expiresAt} />
                      {" · "}
                    </>
                  )}
                  downloaded {l.downloadCount}×
                </span>
                {state === "active" && (
                  <Button
                    variant="link"
                    className="text-red-700"
                    onClick={async () => {
                      const ok = await confirm({
                        title: "Revoke this link?",
                        message: "Anyone holding it gets “gone” from now on. The export itself stays.",
                        confirmLabel: "Revoke link",
                        variant: "danger",
                      });
                      if (ok) revoke.mutate(l.id);
                    }}
                  >
                    Revoke
                  </Button>
                )}
              </li>
            );
          })}
        </ul>
      )}
    </div>
  );
}
