"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import {
  deadLetterKeys,
  discardDeadLetterGroup,
  fetchDeadLetterGroups,
  jobKeys,
  replayDeadLetterGroup,
  type DeadLetterGroupDto,
  type DeadLetterGroupFilter,
} from "@/lib/client/api";
import { formatCount, formatTime } from "@/lib/client/format";
import { Alert } from "./ui/alert";
import { Button } from "./ui/button";
import { useConfirm } from "./ui/confirm-dialog";

const filterOf = (g: DeadLetterGroupDto): DeadLetterGroupFilter => ({
  type: g.type,
  ...(g.errorClass ? { errorClass: g.errorClass } : {}),
  ...(g.fingerprint ? { fingerprint: g.fingerprint } : {}),
});

export function DeadLettersPanel() {
  const qc = useQueryClient();
  const { confirm, dialog } = useConfirm();
  const [done, setDone] = useState<string | null>(null);
  const groups = useQuery({ queryKey: deadLetterKeys.groups, queryFn: fetchDeadLetterGroups, refetchInterval: 10_000 });
  const refresh = () => {
    void qc.invalidateQueries({ queryKey: deadLetterKeys.groups });
    void qc.invalidateQueries({ queryKey: jobKeys.all });
  };
  const replay = useMutation({
    mutationFn: replayDeadLetterGroup,
    onSuccess: (r) => {
      setDone(`Replayed ${formatCount(r.replayed)} of ${formatCount(r.matched)} jobs as new jobs.`);
      refresh();
    },
  });
  const discard = useMutation({
    mutationFn: discardDeadLetterGroup,
    onSuccess: (r) => {
      setDone(`Discarded ${formatCount(r.discarded)} jobs (their history stays).`);
      refresh();
    },
  });
  const busy = replay.isPending || discard.isPending;

  return (
    <div className="space-y-4">
      {dialog}
      {done && <Alert tone="success">{done}</Alert>}
      {(replay.error || discard.error || groups.error) && (
        <Alert tone="error">{(replay.error ?? discard.error ?? groups.error)?.message}</Alert>
      )}
      {groups.isPending ? (
        <p className="text-sm text-slate-500">Loading dead letters…</p>
      ) : groups.data?.groups.length === 0 ? (
        <p className="rounded-lg border border-slate-200 bg-white p-5 text-sm text-slate-500">
          The dead-letter queue is empty.
        </p>
      ) : (
        <ul className="space-y-3">
          {groups.data?.groups.map((g) => (
            <li
              key={`${g.type}|${g.errorClass}|${g.fingerprint}`}
              data-testid="dead-letter-group"
              className="rounded-lg border border-slate-200 bg-white p-4 shadow-sm"
            >
              <div className="flex flex-wrap items-baseline gap-x-3 gap-y-1">
                <span className="text-lg font-semibold" data-testid="group-count">
                  {formatCount(g.count)}
                </span>
                <span className="text-sm text-slate-700">
                  {g.type} jobs failed with this {g.errorClass ?? "unclassified"} error since {formatTime(g.firstAt)}
                </span>
                <span className="text-xs text-slate-500">last {formatTime(g.lastAt)}</span>
                {g.tenants > 1 && <span className="text-xs text-slate-500">· {g.tenants} tenants</span>}
              </div>
              {/* Error text is data: rendered as text, never as markup. */}
              <pre className="mt-2 overflow-x-auto whitespace-pre-wrap rounded bg-slate-50 p-2 text-xs text-slate-800">
                {g.sample ?? "(no message)"}
              </pre>
              <div className="mt-3 flex gap-3">
                <Button
                  variant="primary"
                  disabled={busy}
                  onClick={async () => {
                    const ok = await confirm({
                      title: "Replay this group?",
                      message: `Replay ${g.count} ${g.type} jobs as new jobs?`,
                      confirmLabel: `Replay ${formatCount(g.count)}`,
                    });
                    if (ok) replay.mutate(filterOf(g));
                  }}
                >
                  Replay {formatCount(g.count)}
                </Button>
                <Button
                  disabled={busy}
                  onClick={async () => {
                    const ok = await confirm({
                      title: "Discard this group?",
                      message: `Discard ${g.count} ${g.type} jobs from the dead-letter queue?`,
                      confirmLabel: "Discard",
                      variant: "danger",
                    });
                    if (ok) discard.mutate(filterOf(g));
                  }}
                >
                  Discard
                </Button>
              </div>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
