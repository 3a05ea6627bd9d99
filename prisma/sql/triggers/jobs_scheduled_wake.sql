DROP TRIGGER IF EXISTS jobs_scheduled_wake ON public.jobs;
CREATE TRIGGER jobs_scheduled_wake AFTER INSERT ON public.jobs FOR EACH ROW WHEN ((new.status = 'scheduled'::job_status)) EXECUTE FUNCTION conveyor_scheduler_wake();
