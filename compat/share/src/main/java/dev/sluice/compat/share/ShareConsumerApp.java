package dev.sluice.compat.share;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * One member of a share group (KIP-932) for the kafka-share-consumer compat
 * row (compat/java_share_consumer_test.go): Kafka 4.4's KafkaShareConsumer
 * with share.acknowledgement.mode=explicit, subscribed to one topic. Every
 * record it gets is printed, then acknowledged ACCEPT, and the
 * acknowledgements of each poll are committed with commitSync, whose
 * per-partition outcome is printed for every record. One line per event on
 * stdout, flushed, for the row to count:
 *
 * <pre>
 * STARTED name
 * REC partition offset deliveryCount value
 * ACK partition offset                     (commitSync succeeded for it)
 * ACKFAIL partition offset exception       (commitSync failed for it)
 * ERR exception                            (poll or commitSync threw)
 * CLOSED name
 * </pre>
 *
 * Arguments: --bootstrap ADDRS --group G --topic T --client-id NAME
 * [--ack-delay-ms N] (sleep between a poll and its acknowledgements, so
 * that a member killed with SIGKILL is likely to hold acquired records)
 * [--config key=value]... SIGTERM closes the consumer (its acquired
 * records released, pending acknowledgements sent) and exits 0.
 */
public final class ShareConsumerApp {
    private ShareConsumerApp() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> opts = new HashMap<>();
        Properties props = new Properties();
        for (int i = 0; i + 1 < args.length; i += 2) {
            if (args[i].equals("--config")) {
                String[] kv = args[i + 1].split("=", 2);
                props.put(kv[0], kv[1]);
            } else {
                opts.put(args[i], args[i + 1]);
            }
        }
        String name = opts.getOrDefault("--client-id", "share-consumer");
        long ackDelayMs = Long.parseLong(opts.getOrDefault("--ack-delay-ms", "0"));
        props.put("bootstrap.servers", opts.get("--bootstrap"));
        props.put("group.id", opts.get("--group"));
        props.put("client.id", name);
        props.put("share.acknowledgement.mode", "explicit");

        KafkaShareConsumer<String, String> consumer =
                new KafkaShareConsumer<>(props, new StringDeserializer(), new StringDeserializer());
        CountDownLatch done = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            consumer.wakeup();
            try {
                done.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }));
        consumer.subscribe(List.of(opts.get("--topic")));
        say("STARTED " + name);
        try {
            while (true) {
                ConsumerRecords<String, String> records;
                try {
                    records = consumer.poll(Duration.ofMillis(500));
                } catch (WakeupException e) {
                    break;
                } catch (KafkaException e) {
                    say("ERR " + oneLine(e));
                    continue;
                }
                if (records.isEmpty()) {
                    continue;
                }
                Map<Integer, List<Long>> polled = new HashMap<>();
                StringBuilder out = new StringBuilder();
                for (ConsumerRecord<String, String> r : records) {
                    Optional<Short> count = r.deliveryCount();
                    out.append("REC ").append(r.partition()).append(' ').append(r.offset()).append(' ')
                            .append(count.map(String::valueOf).orElse("-")).append(' ').append(r.value()).append('\n');
                    polled.computeIfAbsent(r.partition(), p -> new ArrayList<>()).add(r.offset());
                }
                System.out.print(out);
                System.out.flush();
                if (ackDelayMs > 0) {
                    try {
                        Thread.sleep(ackDelayMs);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                for (ConsumerRecord<String, String> r : records) {
                    consumer.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                Map<TopicIdPartition, Optional<KafkaException>> result;
                try {
                    result = consumer.commitSync(Duration.ofSeconds(30));
                } catch (WakeupException e) {
                    break;
                } catch (KafkaException e) {
                    say("ERR commitSync " + oneLine(e));
                    continue;
                }
                out.setLength(0);
                for (Map.Entry<TopicIdPartition, Optional<KafkaException>> e : result.entrySet()) {
                    int p = e.getKey().partition();
                    for (long offset : polled.getOrDefault(p, List.of())) {
                        if (e.getValue().isPresent()) {
                            out.append("ACKFAIL ").append(p).append(' ').append(offset).append(' ')
                                    .append(oneLine(e.getValue().get())).append('\n');
                        } else {
                            out.append("ACK ").append(p).append(' ').append(offset).append('\n');
                        }
                    }
                }
                System.out.print(out);
                System.out.flush();
            }
        } finally {
            consumer.close(Duration.ofSeconds(10));
            say("CLOSED " + name);
            done.countDown();
        }
    }

    private static String oneLine(Throwable e) {
        return (e.getClass().getSimpleName() + ": " + e.getMessage()).replace('\n', ' ');
    }

    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
