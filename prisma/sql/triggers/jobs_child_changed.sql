DROP TRIGGER IF EXISTS jobs_child_changed ON public.jobs;
CREATE TRIGGER jobs_child_changed AFTER UPDATE OF status, progress_done, run_at ON public.jobs FOR EACH ROW WHEN (((new.parent_id IS NOT NULL) AND ((new.status IS DISTINCT FROM old.status) OR (new.progress_done IS DISTINCT FROM old.progress_done) OR (new.run_at IS DISTINCT FROM old.run_at)))) EXECUTE FUNCTION conveyor_child_changed();
