DROP TRIGGER IF EXISTS jobs_search_delete ON public.jobs;
CREATE TRIGGER jobs_search_delete AFTER DELETE ON public.jobs REFERENCING OLD TABLE AS old_jobs FOR EACH STATEMENT EXECUTE FUNCTION conveyor_job_search_delete();
