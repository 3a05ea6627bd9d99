DROP TRIGGER IF EXISTS uploads_storage_bytes ON public.uploads;
CREATE TRIGGER uploads_storage_bytes AFTER INSERT OR DELETE OR UPDATE OF size, deleted_at ON public.uploads FOR EACH ROW EXECUTE FUNCTION conveyor_storage_bytes_changed();
