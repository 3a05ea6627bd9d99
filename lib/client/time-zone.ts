/**
 * The zone the reader's times are drawn in: the browser's own, or UTC when they switched to it
 * (the footer's switch; kept in this browser's localStorage). Times are drawn in the browser
 * only: the server does not know the reader's zone, so on the server and while hydrating the
 * zone is null and a time draws nothing yet (no page drawn in the server's zone, no mismatch).
 */
import { useSyncExternalStore } from "react";
import { browserZone } from "./format";

/** Local times (the browser's zone) or UTC. */
export type TimesIn = "local" | "utc";

/** The localStorage key the switch is kept under. */
export const TIMES_IN_KEY = "conveyor.timesIn";

const listeners = new Set<() => void>();

/** What the switch says; "local" when it was never set (or storage is refused). */
export function readTimesIn(): TimesIn {
  try {
    return window.localStorage.getItem(TIMES_IN_KEY) === "utc" ? "utc" : "local";
  } catch {
    return "local";
  }
}

/** Sets the switch, keeps it, and redraws every time on the page. */
export function setTimesIn(value: TimesIn): void {
  try {
    window.localStorage.setItem(TIMES_IN_KEY, value);
  } catch {
    // Storage refused (a private window): the switch holds for this page only.
    memory = value;
  }
  for (const l of listeners) l();
}

let memory: TimesIn | null = null;

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  // Another tab changed the switch.
  const onStorage = (e: StorageEvent) => {
    if (e.key === TIMES_IN_KEY) listener();
  };
  window.addEventListener("storage", onStorage);
  return () => {
    listeners.delete(listener);
    window.removeEventListener("storage", onStorage);
  };
}

/** The zone times are drawn in now: "UTC" when switched to it, else the browser's. */
export function displayZone(): string {
  return (memory ?? readTimesIn()) === "utc" ? "UTC" : browserZone();
}

/** The switch's value, null on the server and while hydrating. */
export function useTimesIn(): TimesIn | null {
  return useSyncExternalStore(
    subscribe,
    () => memory ?? readTimesIn(),
    () => null,
  );
}

/** The zone to draw times in (`displayZone`), null on the server and while hydrating. */
export function useDisplayZone(): string | null {
  return useSyncExternalStore(subscribe, displayZone, () => null);
}

/** The browser's own zone, whatever the switch says (a schedule shows it beside its own); null on the server. */
export function useBrowserZone(): string | null {
  return useSyncExternalStore(subscribe, browserZone, () => null);
}
