DROP TRIGGER IF EXISTS jobs_inserted ON public.jobs;
CREATE TRIGGER jobs_inserted AFTER INSERT ON public.jobs REFERENCING NEW TABLE AS new_jobs FOR EACH STATEMENT EXECUTE FUNCTION conveyor_jobs_inserted();
