DROP TRIGGER IF EXISTS jobs_open_count_inserted ON public.jobs;
CREATE TRIGGER jobs_open_count_inserted AFTER INSERT ON public.jobs REFERENCING NEW TABLE AS new_jobs FOR EACH STATEMENT EXECUTE FUNCTION conveyor_open_jobs_inserted();
