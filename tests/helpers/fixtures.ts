import { AppError } from "@/lib/errors";
import { runOnce, type TaskList } from "graphile-worker";
import { admitAll } from "@/lib/admission/admitter";
import { loadUserPrincipal, type Principal } from "@/lib/auth/principal";
import { db } from "@/lib/db";
import { databaseUrl } from "@/lib/env";
import { DOCUMENTED_DEMO_PASSWORD, seed } from "../../prisma/seed";
import { taskListFor } from "../../worker/task-list";

export type DemoPrincipals = {
  ada: Principal;
  oscar: Principal;
  gus: Principal;
  gina: Principal;
  root: Principal;
  acmeId: string;
  globexId: string;
};

/** Seeds a small demo data set (1% scale) and returns the demo principals. */
export async function seedDemo(scale = 0.01): Promise<DemoPrincipals> {
  const tenants = await seed(scale, DOCUMENTED_DEMO_PASSWORD);
  const principal = async (email: string) => {
    const user = await db().user.findUniqueOrThrow({ where: { email } });
    const p = await loadUserPrincipal(user.id);
    if (!p) throw new Error(`no principal for ${email}`);
    return p;
  };
  return {
    ada: await principal("ada@acme.test"),
    oscar: await principal("oscar@acme.test"),
    gus: await principal("gus@globex.test"),
    gina: await principal("gina@globex.test"),
    root: await principal("root@conveyor.test"),
    acmeId: tenants.get("acme")!,
    globexId: tenants.get("globex")!,
  };
}

/**
 * Runs every job that is due through admission and the real worker task list,
 * then returns: admits, runs what was admitted, and again until nothing is left
 * to admit (a finished job frees a slot for the next). `tasks`: a test's own task list.
 */
export async function drainJobs(tasks: TaskList = taskListFor()): Promise<void> {
  do {
    await runOnce({ connectionString: databaseUrl(), taskList: tasks, logger: quietLogger });
  } while ((await admitAll()) > 0);
}

import { Logger } from "graphile-worker";
export const quietLogger = new Logger(() => (level: string, message: string) => {
  if (level === "error") console.error(message);
});

/** For assert.rejects: an AppError with this code (not_found, forbidden, conflict, gone, invalid_input…). */
export const isCode = (code: string) => (e: unknown) => e instanceof AppError && e.code === code;
