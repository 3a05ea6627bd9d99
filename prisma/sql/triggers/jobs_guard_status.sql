DROP TRIGGER IF EXISTS jobs_guard_status ON public.jobs;
CREATE TRIGGER jobs_guard_status BEFORE UPDATE OF status ON public.jobs FOR EACH ROW EXECUTE FUNCTION conveyor_job_guard_status();
