DROP TRIGGER IF EXISTS jobs_search_update ON public.jobs;
CREATE TRIGGER jobs_search_update AFTER UPDATE OF input, error_message ON public.jobs FOR EACH ROW WHEN (((new.input IS DISTINCT FROM old.input) OR (new.error_message IS DISTINCT FROM old.error_message))) EXECUTE FUNCTION conveyor_job_search_update();
