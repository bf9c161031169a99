// kafkajs against kafkaproto's broker (tests/test_broker_clients.py):
//     node kafkajs_broker.js BOOTSTRAP TOPIC GROUP
// An admin client creates TOPIC with two partitions; an idempotent producer sends 10 records; a
// transactional producer commits one transaction and aborts another; a consumer in GROUP (kafkajs reads
// committed data only by default) must see the 10 records and the committed one, never the aborted one;
// then the topic is deleted. Exits non-zero, with the reason on stderr, if any step fails.

'use strict'

const { Kafka, logLevel } = require('kafkajs')

async function main () {
  const [bootstrap, topic, groupId] = process.argv.slice(2)
  const kafka = new Kafka({ clientId: 'kafkajs-broker-test', brokers: [bootstrap], logLevel: logLevel.WARN })
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 2, replicationFactor: 1 }] })

  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  const plain = []
  for (let i = 0; i < 10; i++) plain.push({ key: `k${i}`, value: `plain ${i}` })
  await producer.send({ topic, acks: -1, messages: plain })
  await producer.disconnect()

  const txProducer = kafka.producer({ transactionalId: `${topic}-txn`, idempotent: true, maxInFlightRequests: 1 })
  await txProducer.connect()
  let txn = await txProducer.transaction()
  await txn.send({ topic, messages: [{ key: 'txn', value: 'committed' }] })
  await txn.commit()
  txn = await txProducer.transaction()
  await txn.send({ topic, messages: [{ key: 'txn', value: 'aborted' }] })
  await txn.abort()
  await txProducer.disconnect()

  const consumer = kafka.consumer({ groupId })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const seen = []
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`consumed ${seen.length} of 11 records: ${seen}`)), 30000)
    consumer.run({
      eachMessage: async ({ message }) => {
        seen.push(message.value.toString())
        if (seen.length >= 11) { clearTimeout(timer); resolve() }
      }
    }).catch(reject)
  })
  await new Promise(resolve => setTimeout(resolve, 500)) // a moment for anything that should not come
  await consumer.disconnect()
  if (seen.includes('aborted') || !seen.includes('committed') || seen.length !== 11) {
    throw new Error(`read_committed saw ${JSON.stringify(seen)}`)
  }
  await admin.deleteTopics({ topics: [topic] })
  await admin.disconnect()
}

main().catch(err => { console.error(err.stack || err); process.exit(1) })
