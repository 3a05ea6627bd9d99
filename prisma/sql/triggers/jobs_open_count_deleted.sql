DROP TRIGGER IF EXISTS jobs_open_count_deleted ON public.jobs;
CREATE TRIGGER jobs_open_count_deleted AFTER DELETE ON public.jobs FOR EACH ROW WHEN (((old.parent_id IS NULL) AND (old.status = ANY (ARRAY['scheduled'::job_status, 'queued'::job_status, 'running'::job_status, 'retrying'::job_status])))) EXECUTE FUNCTION conveyor_open_jobs_changed();
