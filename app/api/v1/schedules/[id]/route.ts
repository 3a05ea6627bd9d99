// GET /api/v1/schedules/{id} – one schedule; PATCH – change fields (next runs recomputed);
// DELETE – delete it: waiting runs cancelled, finished and running ones kept
import { readJson, withPrincipal } from "@/lib/http/route";
import { deleteSchedule, getSchedule, updateSchedule } from "@/lib/schedules/service";

export const GET = withPrincipal<{ id: string }>(async (_req, principal, { id }) =>
  Response.json(await getSchedule(principal, id)),
);

export const PATCH = withPrincipal<{ id: string }>(async (req, principal, { id }) =>
  Response.json(await updateSchedule(principal, id, await readJson(req))),
);

export const DELETE = withPrincipal<{ id: string }>(async (_req, principal, { id }) =>
  Response.json(await deleteSchedule(principal, id)),
);
