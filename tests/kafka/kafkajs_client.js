// The kafkajs side of tests/data/captures/kafkajs.pcap, run by record_captures.py:
//     node kafkajs_client.js BOOTSTRAP TOPIC GROUP
// An admin client creates TOPIC, a producer sends 20 gzip records with a key and a header
// each, a consumer in GROUP reads them and commits, and the admin client deletes the topic.
// Exits non-zero (with the reason on stderr) if any step fails or a record goes missing.

'use strict'

const { Kafka, CompressionTypes, logLevel } = require('kafkajs')

const RECORDS = 20
const CONSUME_TIMEOUT_MS = 30000

async function main () {
  const [bootstrap, topic, groupId] = process.argv.slice(2)
  if (!groupId) {
    throw new Error('usage: node kafkajs_client.js BOOTSTRAP TOPIC GROUP')
  }
  const kafka = new Kafka({ clientId: 'kafkajs', brokers: [bootstrap], logLevel: logLevel.WARN })

  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 1, replicationFactor: 1 }] })

  const producer = kafka.producer({ allowAutoTopicCreation: false })
  await producer.connect()
  const messages = []
  for (let i = 0; i < RECORDS; i++) {
    messages.push({ key: `k${i}`, value: `value ${i} from kafkajs`, headers: { trace: `t${i}` } })
  }
  // Two sends, so the capture holds more than one Produce request.
  await producer.send({ topic, acks: -1, compression: CompressionTypes.GZIP, messages: messages.slice(0, 10) })
  await producer.send({ topic, acks: -1, compression: CompressionTypes.GZIP, messages: messages.slice(10) })
  await producer.disconnect()

  const consumer = kafka.consumer({ groupId })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  let seen = 0
  let lastOffset = null
  const done = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`kafkajs consumed ${seen} of ${RECORDS} records`)),
      CONSUME_TIMEOUT_MS)
    consumer.run({
      autoCommit: false,
      eachMessage: async ({ message }) => {
        seen += 1
        lastOffset = message.offset
        if (seen === RECORDS) {
          clearTimeout(timer)
          resolve()
        }
      }
    })
  })
  await done
  // The committed offset is the next one to read, as for the other clients.
  await consumer.commitOffsets([{ topic, partition: 0, offset: (BigInt(lastOffset) + 1n).toString() }])
  await consumer.disconnect()

  await admin.deleteTopics({ topics: [topic] })
  await admin.disconnect()
}

main().catch((err) => {
  console.error(err && err.stack ? err.stack : err)
  process.exit(1)
})
