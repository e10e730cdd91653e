/**
 * Large payloads as S3 objects. DynamoDB bills a write unit per kilobyte of item, S3 a flat price per PUT: past
 * about ten kilobytes an object is the cheaper home, and a 200 KB payload costs one write unit (the item that
 * names its object) instead of about 150. Objects are written once and never changed, only copied onto
 * themselves when their task is to live longer; the bucket's lifecycle rule removes them once that long has
 * passed since their last write.
 */
import {
  CopyObjectCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  NoSuchKey,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';

import { LIMITS } from '#domain/task-spec';

/** Payload objects live under this prefix; the bucket's lifecycle rule and every grant name it. */
export const PAYLOAD_OBJECT_PREFIX = 'payloads/';

/**
 * Days the bucket's lifecycle rule keeps an object after its last write: the longest delay, then the longest queue
 * age, then the retention. An object written (or re-armed) when its task's next claimable time is set outlives
 * the payload item written beside it.
 */
export const payloadObjectDays = (settings: {
  readonly maxQueueAgeSeconds: number;
  readonly taskRetentionSeconds: number;
}): number =>
  Math.ceil((LIMITS.delaySeconds + settings.maxQueueAgeSeconds + settings.taskRetentionSeconds) / 86_400);

export class PayloadObjects {
  constructor(
    readonly s3: S3Client,
    readonly bucketName: string,
  ) {}

  async put(key: string, body: Uint8Array): Promise<void> {
    await this.s3.send(new PutObjectCommand({ Bucket: this.bucketName, Key: key, Body: body }));
  }

  /**
   * Restarts the lifecycle rule's count for an object: a copy onto itself is a new object to S3, dated now. S3
   * refuses a copy that changes nothing, so the copy replaces the metadata with the time it is kept for. An object
   * already gone stays gone.
   */
  async keep(key: string, keptUntil: number): Promise<void> {
    try {
      await this.s3.send(
        new CopyObjectCommand({
          Bucket: this.bucketName,
          Key: key,
          CopySource: `${this.bucketName}/${key}`,
          MetadataDirective: 'REPLACE',
          Metadata: { 'kept-until': String(keptUntil) },
        }),
      );
    } catch (error) {
      // The SDK models NoSuchKey for GetObject only; a copy's missing source is an S3 error of that name.
      if ((error as { name?: string }).name !== 'NoSuchKey') throw error;
    }
  }

  async delete(key: string): Promise<void> {
    await this.s3.send(new DeleteObjectCommand({ Bucket: this.bucketName, Key: key }));
  }

  /** The object's bytes, or undefined when it is gone (expired). */
  async get(key: string): Promise<Uint8Array | undefined> {
    try {
      const output = await this.s3.send(new GetObjectCommand({ Bucket: this.bucketName, Key: key }));
      return output.Body ? await output.Body.transformToByteArray() : undefined;
    } catch (error) {
      if (error instanceof NoSuchKey) return undefined;
      throw error;
    }
  }
}
