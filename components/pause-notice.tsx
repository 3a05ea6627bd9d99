"use client";

import Link from "next/link";
import type { JobDto } from "@/lib/client/api";
import { pauseText } from "@/lib/client/format";
import { StatusBadge } from "./ui/status-badge";
import { Time } from "./ui/time";

/** A "paused" badge for a job (or a parent whose parts are held), with the pause's reason on hover. */
export function PauseBadge({ pause }: { pause: JobDto["pause"] }) {
  if (!pause) return null;
  return (
    <StatusBadge
      status="paused"
      label={pause.via === "parts" ? "parts paused" : "paused"}
      testId="pause-badge"
      title={pauseText(pause)}
    />
  );
}

/**
 * What holds a job: the pause, who made it, why and since when; operators get
 * the link to the pause and its Resume (the Queues page), members are told who to ask.
 */
export function PauseNotice({ pause, canOperate }: { pause: JobDto["pause"]; canOperate: boolean }) {
  if (!pause) return null;
  return (
    <div
      role="status"
      data-testid="pause-notice"
      className="rounded-lg border border-amber-300 bg-amber-50 p-4 text-sm text-amber-900"
    >
      <p className="font-semibold">
        {pauseText(pause)}
        {pause.since ? (
          <>
            {" · since "}
            <Time iso={pause.since} />
          </>
        ) : null}
      </p>
      <p className="mt-1">
        {pause.via === "parts"
          ? "The export waits for its parts; they start when the pause is resumed."
          : "It starts when the pause is resumed."}{" "}
        {canOperate ? (
          <Link
            href={pause.id ? `/ops/queues#pause-${pause.id}` : "/ops/queues"}
            className="font-medium text-indigo-700 underline"
          >
            See the pause and resume it
          </Link>
        ) : (
          "An operator of your organisation can resume it."
        )}
      </p>
    </div>
  );
}
