import { Module } from '@nestjs/common';
import { Broker } from '../cluster/broker';
import { ClusterContext } from '../cluster/cluster-context';
import { ClusterModule } from '../cluster/cluster.module';
import { ResumeModule } from '../resume/resume.module';
import { GatewayConfig } from '../config/gateway-config';
import { ConnectionsModule } from '../connections/connections.module';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { isResumeOffered } from '../resume/resume-settings';
import { MemoryTopicStream } from './memory-topic-stream';
import { PlainTopicStream } from './plain-topic-stream';
import { PubSubService } from './pubsub.service';
import { RedisTopicStream } from './redis-topic-stream';
import { TopicLog } from './topic-log';
import { TopicStream } from './topic-stream';
import { TopicSubscribers } from './topic-subscribers';

/** The one place that says which {@link TopicStream} this gateway runs (STYLE rule 11). */
export function topicStreamFor(
  config: GatewayConfig,
  cluster: ClusterContext,
  broker: Broker,
  subscribers: TopicSubscribers,
  metrics: GatewayMetrics,
): TopicStream {
  if (!isResumeOffered(config)) return new PlainTopicStream(broker, subscribers);
  const { historySize, historyTtlMs, topicHistoryMaxBytes, historyMemoryMaxBytes } = config.resume;
  if (cluster.shards === null) {
    const limits = {
      size: historySize,
      ttlMs: historyTtlMs,
      topicMaxBytes: topicHistoryMaxBytes,
      memoryMaxBytes: historyMemoryMaxBytes,
    };
    return new MemoryTopicStream(broker, subscribers, metrics, limits);
  }
  const { shards, names, nodeId } = cluster;
  const log = new TopicLog(shards, names, nodeId, historySize, historyTtlMs, topicHistoryMaxBytes);
  return new RedisTopicStream(log, subscribers, shards, metrics);
}

@Module({
  imports: [ConnectionsModule, ClusterModule, ResumeModule],
  providers: [
    TopicSubscribers,
    {
      provide: TopicStream,
      useFactory: topicStreamFor,
      inject: [GatewayConfig, ClusterContext, Broker, TopicSubscribers, GatewayMetrics],
    },
    PubSubService,
  ],
  exports: [PubSubService],
})
export class PubSubModule {}
