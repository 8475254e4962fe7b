import { applyDecorators } from '@nestjs/common';
import { ApiExtraModels, ApiProperty, ApiPropertyOptional, ApiResponse, getSchemaPath } from '@nestjs/swagger';
import { STATUS_CODES } from 'node:http';
import { ERROR_STATUS, ErrorCode } from './error-codes';

export class FieldErrorDto {
  @ApiProperty({ example: 'taxpayer.country' }) field: string;
  @ApiProperty({ example: 'must be an ISO 3166-1 alpha-2 country code in upper case' }) message: string;
}

export class ProblemDto {
  @ApiProperty({ example: 'about:blank' }) type: string;
  @ApiProperty({ example: 'Unprocessable Content' }) title: string;
  @ApiProperty({ example: 422 }) status: number;
  @ApiProperty({ enum: Object.keys(ERROR_STATUS), example: 'VALIDATION_ERROR' }) code: string;
  @ApiProperty({ example: 'The request is not valid' }) detail: string;
  @ApiProperty({ example: '/api/v1/documents' }) instance: string;
  @ApiProperty({ example: '3f0c8a52-0b4e-4a53-9d7e-2f1c9b7f0e11' }) requestId: string;
  @ApiPropertyOptional({ type: [FieldErrorDto] }) errors?: FieldErrorDto[];
}

/** OpenAPI responses for the given error codes, grouped by status, each an application/problem+json body. */
export function ApiProblems(...codes: ErrorCode[]) {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) byStatus.set(ERROR_STATUS[code], [...(byStatus.get(ERROR_STATUS[code]) ?? []), code]);
  return applyDecorators(
    ApiExtraModels(ProblemDto),
    ...[...byStatus].map(([status, group]) =>
      ApiResponse({
        status,
        description: group.join(' | '),
        content: {
          'application/problem+json': {
            schema: { $ref: getSchemaPath(ProblemDto) },
            example: { type: 'about:blank', title: STATUS_CODES[status], status, code: group[0], detail: '…', instance: '/api/v1/…', requestId: '…' },
          },
        },
      }),
    ),
  );
}
