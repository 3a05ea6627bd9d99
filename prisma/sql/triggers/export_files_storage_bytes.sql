DROP TRIGGER IF EXISTS export_files_storage_bytes ON public.export_files;
CREATE TRIGGER export_files_storage_bytes AFTER INSERT OR DELETE OR UPDATE OF size, deleted_at ON public.export_files FOR EACH ROW EXECUTE FUNCTION conveyor_storage_bytes_changed();
