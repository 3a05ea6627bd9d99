DROP TRIGGER IF EXISTS jobs_cancel_waiting ON public.jobs;
CREATE TRIGGER jobs_cancel_waiting AFTER UPDATE OF cancel_requested_at ON public.jobs FOR EACH ROW WHEN (((new.cancel_requested_at IS NOT NULL) AND (old.cancel_requested_at IS NULL) AND (new.waiting_since IS NOT NULL))) EXECUTE FUNCTION conveyor_cancel_waiting();
