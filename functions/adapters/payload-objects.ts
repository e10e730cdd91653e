/**
 * Large payloads as S3 objects. DynamoDB bills a write unit per kilobyte of item, S3 a flat price per PUT: past
 * about ten kilobytes an object is the cheaper home, and a 200 KB payload costs one write unit (the item that
 * names its object) instead of about 150. Objects are written once and never changed; the bucket's lifecycle
 * rule removes them after the longest a payload can be needed.
 */
import {
  DeleteObjectCommand,
  GetObjectCommand,
  NoSuchKey,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';

/** Payload objects live under this prefix; the bucket's lifecycle rule and every grant name it. */
export const PAYLOAD_OBJECT_PREFIX = 'payloads/';

export class PayloadObjects {
  constructor(
    readonly s3: S3Client,
    readonly bucketName: string,
  ) {}

  async put(key: string, body: Uint8Array): Promise<void> {
    await this.s3.send(new PutObjectCommand({ Bucket: this.bucketName, Key: key, Body: body }));
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
