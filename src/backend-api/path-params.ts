import { Injectable, PipeTransform } from '@nestjs/common';
import {
  RESERVED_NAMESPACE_PREFIX,
  isValidNamespace,
  isValidTopic,
  isValidUserId,
  isWellFormedConnectionId,
} from '../protocol/identifiers';
import { BackendApiError, notFound } from './backend-api.error';

/** Express 5 gives a `*name` wildcard as its segments; join them back into a path. */
function joined(value: string | string[]): string {
  return Array.isArray(value) ? value.join('/') : value;
}

/** conn_id: `[A-Za-z0-9_-]{1,64}` else 404 (SPEC §5). */
@Injectable()
export class ConnectionIdPipe implements PipeTransform<string, string> {
  transform(value: string): string {
    if (!isWellFormedConnectionId(value)) throw notFound();
    return value;
  }
}

/** Topic path: `a-zA-Z0-9:_/-`, no empty part, else 404. */
@Injectable()
export class TopicPipe implements PipeTransform<string | string[], string> {
  transform(value: string | string[]): string {
    const topic = joined(value);
    if (!isValidTopic(topic)) throw notFound();
    return topic;
  }
}

/** Namespace path: `a-zA-Z0-9_/-` else 404; `gateway/…` is reserved: 403 (SPEC §5, [fix] on endpoint 6 too). */
@Injectable()
export class NamespacePipe implements PipeTransform<string | string[], string> {
  transform(value: string | string[]): string {
    const namespace = joined(value);
    if (!isValidNamespace(namespace)) throw notFound();
    if (namespace.startsWith(RESERVED_NAMESPACE_PREFIX)) throw new BackendApiError(403);
    return namespace;
  }
}

/** User id path: `a-zA-Z0-9:_/-` (1–256) else 404. */
@Injectable()
export class UserIdPipe implements PipeTransform<string | string[], string> {
  transform(value: string | string[]): string {
    const userId = joined(value);
    if (!isValidUserId(userId)) throw notFound();
    return userId;
  }
}
