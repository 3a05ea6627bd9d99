DROP TRIGGER IF EXISTS jobs_open_count_truncated ON public.jobs;
CREATE TRIGGER jobs_open_count_truncated AFTER TRUNCATE ON public.jobs FOR EACH STATEMENT EXECUTE FUNCTION conveyor_open_jobs_truncated();
