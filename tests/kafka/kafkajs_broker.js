// kafkajs against kafkaproto's broker (tests/test_broker_clients.py):
//     node kafkajs_broker.js BOOTSTRAP TOPIC GROUP
// An admin client creates TOPIC with two partitions; a producer sends with acks 0 and 1, an idempotent one
// with acks -1 (10 records in all); a transactional producer commits one transaction and aborts another; two
// consumers in GROUP (kafkajs reads committed data only by default; the second joining rebalances the
// group) must see the 10 records and the committed one between them, never the aborted one; then the
// topic is deleted. Exits non-zero, with the reason on stderr, if any step fails.

'use strict'

const { Kafka, logLevel } = require('kafkajs')

let step = 'starting'

async function main () {
  const [bootstrap, topic, groupId] = process.argv.slice(2)
  setTimeout(() => { console.error(`gave up after 60 s at: ${step}`); process.exit(2) }, 60000).unref()
  const kafka = new Kafka({ clientId: 'kafkajs-broker-test', brokers: [bootstrap], logLevel: logLevel.WARN })
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 2, replicationFactor: 1 }] })

  step = 'producing'
  const plainProducer = kafka.producer()
  await plainProducer.connect()
  await plainProducer.send({ topic, acks: 0, messages: [{ key: 'k0', value: 'plain 0' }] })
  await plainProducer.send({ topic, acks: 1, messages: [{ key: 'k1', value: 'plain 1' }] })
  await plainProducer.disconnect()
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  const plain = []
  for (let i = 2; i < 10; i++) plain.push({ key: `k${i}`, value: `plain ${i}` })
  await producer.send({ topic, acks: -1, messages: plain })
  await producer.disconnect()

  step = 'transactions'
  const txProducer = kafka.producer({ transactionalId: `${topic}-txn`, idempotent: true, maxInFlightRequests: 1 })
  await txProducer.connect()
  let txn = await txProducer.transaction()
  await txn.send({ topic, messages: [{ key: 'txn', value: 'committed' }] })
  await txn.commit()
  txn = await txProducer.transaction()
  await txn.send({ topic, messages: [{ key: 'txn', value: 'aborted' }] })
  await txn.abort()
  await txProducer.disconnect()

  step = 'consuming'
  const consumers = [kafka.consumer({ groupId }), kafka.consumer({ groupId })]
  const seen = new Set() // at least once: a record may come twice across the rebalance
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`consumed ${seen.size} of 11 records: ${[...seen]}`)), 30000)
    const eachMessage = async ({ message }) => {
      seen.add(message.value.toString())
      if (seen.size >= 11) { clearTimeout(timer); resolve() }
    }
    const start = async consumer => {
      await consumer.connect()
      await consumer.subscribe({ topic, fromBeginning: true })
      await consumer.run({ eachMessage })
    }
    start(consumers[0]).then(() => start(consumers[1])).catch(reject)
  })
  await new Promise(resolve => setTimeout(resolve, 500)) // a moment for anything that should not come
  step = 'leaving the group'
  for (const consumer of consumers) await consumer.stop() // no fetch in flight when the sockets close
  for (const consumer of consumers) await consumer.disconnect()
  if (seen.has('aborted') || !seen.has('committed') || seen.size !== 11) {
    throw new Error(`read_committed saw ${JSON.stringify([...seen])}`)
  }
  step = 'deleting the topic'
  await admin.deleteTopics({ topics: [topic] })
  await admin.disconnect()
}

main().then(() => process.exit(0), err => { console.error(err.stack || err); process.exit(1) })
