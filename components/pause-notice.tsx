"use client";

import Link from "next/link";
import type { JobDto } from "@/lib/client/api";
import { pauseText } from "@/lib/client/format";
import { childNoun } from "@/lib/client/kinds/lookup";
import { StatusBadge } from "./ui/status-badge";
import { Time } from "./ui/time";

/**
 * A "paused" badge for a job (or a parent whose children are held: "stages paused" on an
 * import, `type` naming them through the job kinds), with the pause's reason on hover.
 */
export function PauseBadge({ pause, type }: { pause: JobDto["pause"]; type?: string }) {
  if (!pause) return null;
  return (
    <StatusBadge
      status="paused"
      label={pause.via === "parts" ? `${type ? childNoun(type) : "parts"} paused` : "paused"}
      testId="pause-badge"
      title={pauseText(pause, type ? childNoun(type) : "parts")}
    />
  );
}

/**
 * What holds a job: the pause, who made it, why and since when; operators get
 * the link to the pause and its Resume (the Queues page), members are told who to ask.
 */
export function PauseNotice({
  pause,
  canOperate,
  type,
}: {
  pause: JobDto["pause"];
  canOperate: boolean;
  /** The held job's type: its children's name ("stages" of an import) comes from its kind. */
  type: string;
}) {
  if (!pause) return null;
  const noun = childNoun(type);
  return (
    <div
      role="status"
      data-testid="pause-notice"
      className="rounded-lg border border-amber-300 bg-amber-50 p-4 text-sm text-amber-900"
    >
      <p className="font-semibold">
        {pauseText(pause, noun)}
        {pause.since ? (
          <>
            {" · since "}
            <Time iso={pause.since} />
          </>
        ) : null}
      </p>
      <p className="mt-1">
        {pause.via === "parts"
          ? `It waits for its ${noun}; they start when the pause is resumed.`
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
