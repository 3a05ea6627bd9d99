DROP TRIGGER IF EXISTS jobs_search_truncate ON public.jobs;
CREATE TRIGGER jobs_search_truncate AFTER TRUNCATE ON public.jobs FOR EACH STATEMENT EXECUTE FUNCTION conveyor_job_search_truncate();
