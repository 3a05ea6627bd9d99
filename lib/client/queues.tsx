"use client";
/**
 * The queues' names in the browser: the server's registry knows them (the engine's and
 * those the workloads' manifests bring); the signed-in layout hands them down once.
 */
import { createContext, useContext, type ReactNode } from "react";

const QueueNames = createContext<readonly string[]>([]);

export function QueueNamesProvider({ names, children }: { names: readonly string[]; children: ReactNode }) {
  return <QueueNames.Provider value={names}>{children}</QueueNames.Provider>;
}

/** Every queue's name, as the server registered them. */
export function useQueueNames(): readonly string[] {
  return useContext(QueueNames);
}
