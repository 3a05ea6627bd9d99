/**
 * A job as the API shows it: the wire DTO (dto.ts) with the input fields its
 * task marks sensitive redacted. Server side (it needs the task registry).
 */
import { toJobDto, type JobDto } from "./dto";
import { redactInput } from "./registry";

/** toJobDto, with the task's sensitive input fields shown as "[redacted]". */
export function jobView(...args: Parameters<typeof toJobDto>): JobDto {
  const dto = toJobDto(...args);
  return { ...dto, input: redactInput(dto.type, dto.input) };
}
