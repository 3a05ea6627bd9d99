DROP TRIGGER IF EXISTS jobs_record_transition ON public.jobs;
CREATE TRIGGER jobs_record_transition AFTER UPDATE OF status ON public.jobs FOR EACH ROW EXECUTE FUNCTION conveyor_job_record_transition();
