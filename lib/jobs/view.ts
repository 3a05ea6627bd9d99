/**
 * A job as the API shows it: the wire DTO (dto.ts) with the input fields its
 * task marks sensitive redacted. Server side (it needs the task registry).
 */
import { toJobDto, type JobDto } from "./dto";
import { getTaskDefinition, redactInput } from "./registry";

/**
 * toJobDto, with the task's sensitive input fields shown as "[redacted]", and
 * its files' download addresses the task's own (an import's errors file).
 */
export function jobView(...args: Parameters<typeof toJobDto>): JobDto {
  const dto = toJobDto(...args);
  const fileUrl = getTaskDefinition(dto.type)?.fileUrl;
  const result =
    fileUrl && dto.result
      ? { ...dto.result, files: dto.result.files.map((f) => ({ ...f, downloadUrl: fileUrl(dto.id, f.name) })) }
      : dto.result;
  return { ...dto, input: redactInput(dto.type, dto.input), result };
}
