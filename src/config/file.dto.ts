import 'reflect-metadata';
import { Type } from 'class-transformer';
import { IsDefined, IsObject, IsOptional, ValidateNested } from 'class-validator';
import { IsDuration, IsHeaderName, IsHostHeader, IsHttpUrl, IsPath, IsWholeNumber } from './validators';

const REQUIRED = { message: 'is required' };
const MAPPING = { message: 'must be a mapping' };

/**
 * `destinations.<name>` of the YAML file (SPEC §1). Property names are the
 * file's own snake_case keys, so problems name the key the operator wrote.
 * Unset values fall back to the destination-level env vars.
 */
export class DestinationDto {
  @IsDefined(REQUIRED) @IsHttpUrl() url!: string;
  @IsOptional() @IsDuration() timeout?: string;
  @IsOptional() @IsWholeNumber(1) max_sockets?: number | string;
  @IsOptional() @IsWholeNumber(0) queue_limit?: number | string;
  @IsOptional() @IsHeaderName() request_id_header?: string;
  @IsOptional() @IsHostHeader() override_host_header?: string;
}

/**
 * `handlers.<name>` of the YAML file. `message_handlers` maps a pattern to
 * `"<destination>/<path-prefix>"`; patterns and targets are checked by the loader,
 * which knows the destinations.
 */
export class HandlerDto {
  @IsDefined(REQUIRED) @IsPath() path!: string;
  @IsDefined(REQUIRED) @IsObject(MAPPING) message_handlers!: Record<string, unknown>;
}

/** The whole YAML file: both maps are required; unknown keys are rejected by the loader's validation options. */
export class FileDto {
  @IsDefined(REQUIRED)
  @IsObject(MAPPING)
  @ValidateNested({ each: true, ...MAPPING })
  @Type(() => DestinationDto)
  destinations!: Map<string, DestinationDto>;

  @IsDefined(REQUIRED)
  @IsObject(MAPPING)
  @ValidateNested({ each: true, ...MAPPING })
  @Type(() => HandlerDto)
  handlers!: Map<string, HandlerDto>;
}
