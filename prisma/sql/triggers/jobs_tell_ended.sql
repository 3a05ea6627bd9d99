DROP TRIGGER IF EXISTS jobs_tell_ended ON public.jobs;
CREATE TRIGGER jobs_tell_ended AFTER UPDATE OF status ON public.jobs FOR EACH ROW WHEN (((new.status = ANY (ARRAY['succeeded'::job_status, 'failed'::job_status, 'cancelled'::job_status])) AND (old.status IS DISTINCT FROM new.status) AND (new.parent_id IS NULL))) EXECUTE FUNCTION conveyor_job_ended();
