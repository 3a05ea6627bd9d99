import type { TaskList } from "graphile-worker";
import { taskCatalog } from "@/lib/jobs/catalog";
import exportTask from "./export";
import probeTask from "./probe";

/** One graphile-worker task per task type of the catalog (checked at start-up). */
export const taskList: TaskList = {
  export: exportTask,
  probe: probeTask,
};

const missing = Object.keys(taskCatalog).filter((t) => !(t in taskList));
if (missing.length) throw new Error(`worker/tasks has no handler for task types: ${missing.join(", ")}`);
