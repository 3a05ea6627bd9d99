DROP TRIGGER IF EXISTS jobs_bump_seq ON public.jobs;
CREATE TRIGGER jobs_bump_seq BEFORE UPDATE ON public.jobs FOR EACH ROW EXECUTE FUNCTION conveyor_job_bump_seq();
