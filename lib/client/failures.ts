/**
 * A failure in two layers: a plain sentence for the member who asked for the work — what
 * happened, whose problem it is and what to do — made from the error's class (data on the
 * wire, `error.class`); and the technical cause (the class and the worker's own message, a
 * storage error say) for operators, kept word for word. The engine's message is never the
 * first thing a member reads: "worker vm:31405:1fd691 stopped renewing its lease" is ours.
 */
import type { JobDto } from "../jobs/dto";

export type FailureWords = {
  /** What happened, in a sentence. */
  summary: string;
  /** What to do now. */
  next: string;
  /** Whose problem it is: the platform's (`ours`), the request's (`request`), or a service it calls (`downstream`). */
  whose: "ours" | "request" | "downstream";
};

/**
 * The member's layer of a job's error. `final`: the job failed (no attempt left); else an
 * attempt failed and it is tried again on its own.
 */
export function failureWords(errorClass: string | null, final: boolean): FailureWords {
  const retried = "It is tried again on its own; there is nothing to do.";
  const again =
    "Request it again. If it fails again, tell an operator of your organisation: the details below are for them.";
  switch (errorClass) {
    case "crashed":
    case "lease_lost":
    case "shutdown":
      return {
        summary: "The machine running it stopped before it finished. That was on our side, not in your request.",
        next: final ? again : retried,
        whose: "ours",
      };
    case "timeout":
      return {
        summary: "It ran longer than its time limit.",
        next: final
          ? "Request less at once (a narrower window, fewer rows), or ask an operator of your organisation to look at the details below."
          : retried,
        whose: "ours",
      };
    case "permanent":
      return {
        summary: "It cannot succeed as it was asked: trying again would fail the same way.",
        next: "Check what was asked (the reason is below), change it and request it again.",
        whose: "request",
      };
    case "exhausted":
      return {
        summary: "It was tried again and again on its schedule and failed every time, so it stopped trying.",
        next: "Fix what it calls (the last answer is below), then replay it.",
        whose: "downstream",
      };
    case "rate_limited":
      return {
        summary: "A service it depends on asked it to slow down.",
        next: final ? again : retried,
        whose: "downstream",
      };
    default:
      return {
        summary: "It ran into a problem on our side (storage, the database or a service it depends on).",
        next: final ? again : retried,
        whose: "ours",
      };
  }
}

/** The operator's layer: the class and the cause, as the worker wrote them. */
export function failureCause(error: NonNullable<JobDto["error"]>): string {
  return `${error.class ?? "error"}: ${error.message}`;
}
