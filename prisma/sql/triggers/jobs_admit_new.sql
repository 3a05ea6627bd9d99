DROP TRIGGER IF EXISTS jobs_admit_new ON public.jobs;
CREATE TRIGGER jobs_admit_new BEFORE INSERT ON public.jobs FOR EACH ROW EXECUTE FUNCTION conveyor_job_admit_new();
