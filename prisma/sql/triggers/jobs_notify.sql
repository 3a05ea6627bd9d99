DROP TRIGGER IF EXISTS jobs_notify ON public.jobs;
CREATE TRIGGER jobs_notify AFTER UPDATE ON public.jobs FOR EACH ROW EXECUTE FUNCTION conveyor_job_notify();
