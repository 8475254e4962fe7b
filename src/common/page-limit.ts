import { applyDecorators } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, Max, Min } from 'class-validator';

/** The optional `limit` query parameter of a list: an integer from 1 to `max`. */
export function PageLimit(max: number, fallback: number): PropertyDecorator {
  const message = `must be an integer from 1 to ${max}`;
  return applyDecorators(
    ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: max, default: fallback, description: `Items per page, 1 to ${max}` }),
    IsOptional(),
    Type(() => Number),
    IsInt({ message }),
    Min(1, { message }),
    Max(max, { message }),
  );
}
