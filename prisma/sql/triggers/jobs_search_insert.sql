DROP TRIGGER IF EXISTS jobs_search_insert ON public.jobs;
CREATE TRIGGER jobs_search_insert AFTER INSERT ON public.jobs REFERENCING NEW TABLE AS new_jobs FOR EACH STATEMENT EXECUTE FUNCTION conveyor_job_search_insert();
