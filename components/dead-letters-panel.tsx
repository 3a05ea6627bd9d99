"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { refetchAfterChange } from "@/lib/client/refresh";
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
import Link from "next/link";
import { formatCount } from "@/lib/client/format";
import { Time } from "./ui/time";
import { Alert } from "./ui/alert";
import { Button } from "./ui/button";
import { useConfirm } from "./ui/confirm-dialog";

/** The jobs explorer filtered to one group's jobs. */
export function groupJobsHref(g: DeadLetterGroupDto): string {
  // dead=1: not yet replayed or discarded (exactly the group); children=1: a group may hold export parts.
  const q = new URLSearchParams({ status: "failed", type: g.type, dead: "1", children: "1" });
  if (g.errorClass) q.set("errorClass", g.errorClass);
  if (g.fingerprint) q.set("fingerprint", g.fingerprint);
  return `/ops/jobs?${q.toString()}`;
}

/** Why replaying a group as it is would likely fail again (null when a replay is the natural fix). */
function replayWarning(g: DeadLetterGroupDto): string | null {
  if (g.errorClass === "crashed")
    return "These jobs ended in their worker's death (each attempt killed or crashed its worker). Replayed as they are, they will likely crash workers again. Replay them only after the cause is fixed.";
  if (g.errorClass === "permanent")
    return "These jobs failed with a permanent error (bad input or a refusal that retrying does not change). Replayed as they are, they will likely fail the same way. Replay them only after the cause is fixed.";
  return null;
}

const filterOf = (g: DeadLetterGroupDto): DeadLetterGroupFilter => ({
  type: g.type,
  ...(g.errorClass ? { errorClass: g.errorClass } : {}),
  ...(g.fingerprint ? { fingerprint: g.fingerprint } : {}),
});

export function DeadLettersPanel() {
  const qc = useQueryClient();
  const { confirm, dialog } = useConfirm();
  const [done, setDone] = useState<{ tone: "success" | "neutral"; text: string } | null>(null);
  const groups = useQuery({ queryKey: deadLetterKeys.groups, queryFn: fetchDeadLetterGroups, refetchInterval: 10_000 });
  const refresh = () => {
    void refetchAfterChange(qc, deadLetterKeys.groups);
    void refetchAfterChange(qc, jobKeys.all);
  };
  const replay = useMutation({
    mutationFn: replayDeadLetterGroup,
    onSuccess: (r) => {
      setDone(
        r.replayed > 0
          ? {
              tone: "success",
              text: `Replayed ${formatCount(r.replayed)} of ${formatCount(r.matched)} jobs as new jobs.`,
            }
          : { tone: "neutral", text: "Nothing was replayed: these jobs were already replayed or discarded." },
      );
      refresh();
    },
  });
  const discard = useMutation({
    mutationFn: discardDeadLetterGroup,
    onSuccess: (r) => {
      setDone(
        r.discarded > 0
          ? { tone: "success", text: `Discarded ${formatCount(r.discarded)} jobs (their history stays).` }
          : { tone: "neutral", text: "Nothing was discarded: these jobs had already left the queue." },
      );
      refresh();
    },
  });
  const busy = replay.isPending || discard.isPending;

  return (
    <div className="space-y-4">
      {dialog}
      {done && <Alert tone={done.tone}>{done.text}</Alert>}
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
          {groups.data?.groups.map((g) => {
            const warning = replayWarning(g);
            return (
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
                    {g.type} jobs failed with this {g.errorClass ?? "unclassified"} error since <Time iso={g.firstAt} />
                  </span>
                  <span className="text-xs text-slate-500">
                    last <Time iso={g.lastAt} />
                  </span>
                  {g.tenants > 1 && <span className="text-xs text-slate-500">· {g.tenants} tenants</span>}
                </div>
                {/* Error text is data: rendered as text, never as markup. */}
                <pre className="mt-2 overflow-x-auto whitespace-pre-wrap rounded bg-slate-50 p-2 text-xs text-slate-800">
                  {g.sample ?? "(no message)"}
                </pre>
                {warning && (
                  <p className="mt-2 text-sm text-amber-900" data-testid="replay-warning">
                    {warning}
                  </p>
                )}
                <div className="mt-3 flex flex-wrap items-center gap-3">
                  <Link
                    href={groupJobsHref(g)}
                    className="text-sm font-medium text-indigo-700 underline"
                    data-testid="group-jobs"
                  >
                    View the {formatCount(g.count)} {g.count === 1 ? "job" : "jobs"}
                  </Link>
                  <Button
                    variant={warning ? "secondary" : "primary"}
                    disabled={busy}
                    onClick={async () => {
                      const ok = await confirm({
                        title: warning ? "Replay jobs that will likely fail again?" : "Replay this group?",
                        message: warning
                          ? `${warning} Replay ${formatCount(g.count)} ${g.type} jobs anyway?`
                          : `Replay ${formatCount(g.count)} ${g.type} jobs as new jobs?`,
                        confirmLabel: warning
                          ? `Replay ${formatCount(g.count)} anyway`
                          : `Replay ${formatCount(g.count)}`,
                        variant: warning ? "danger" : undefined,
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
            );
          })}
        </ul>
      )}
    </div>
  );
}
