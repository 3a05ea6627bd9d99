-- A job's operator actions are looked up by the ids an audit entry is about (job page, console).
CREATE INDEX "audit_logs_target_ids_idx" ON "audit_logs" USING GIN ("target_ids");
