// SumApp is the Kafka Streams application of the kafka-streams compat row
// (compat/streams_test.go): it sums the long values of an input topic per
// key into a state store "sums" (whose changelog Streams creates, compacted)
// and writes each new sum to an output topic, with
// processing.guarantee=exactly_once_v2.
//
// The record cache is off (statestore.cache.max.bytes=0), so every input
// record makes exactly one changelog record and one output record: the
// changelog's length before compaction is known.
//
// It reports what the row measures on stdout, one event per line, each
// starting with a word and ending with the wall clock in milliseconds:
//
//	started <ms>
//	state <old> <new> <ms>
//	restore-start <topic> <partition> <store> <startOffset> <endOffset> <ms>
//	restore-end <topic> <partition> <store> <restored> <ms>
//	error <message> <ms>
//	closed <ms>
//
// It runs until its standard input ends (or reads "stop"), then closes
// Streams cleanly and exits 0; it exits 1 if Streams fails.
package dev.sluice.compat.streams;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Properties;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.state.KeyValueStore;

public final class SumApp {
    /** The state store's name; its changelog is {@code <application.id>-sums-changelog}. */
    static final String STORE = "sums";

    private static synchronized void event(String line) {
        System.out.println(line + " " + System.currentTimeMillis());
        System.out.flush();
    }

    private static void usage() {
        System.err.println("usage: SumApp --bootstrap HOST:PORT[,...] --app-id ID --input TOPIC --output TOPIC"
                + " --state-dir DIR [--replication N] [--config key=value]...");
        System.exit(2);
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        String input = null, output = null;
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.LongSerde.class);
        for (int i = 0; i < args.length; i++) {
            if (i + 1 >= args.length) {
                usage();
            }
            String v = args[++i];
            switch (args[i - 1]) {
                case "--bootstrap" -> props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, v);
                case "--app-id" -> props.put(StreamsConfig.APPLICATION_ID_CONFIG, v);
                case "--input" -> input = v;
                case "--output" -> output = v;
                case "--state-dir" -> props.put(StreamsConfig.STATE_DIR_CONFIG, v);
                case "--replication" -> props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, Integer.parseInt(v));
                case "--config" -> {
                    int eq = v.indexOf('=');
                    if (eq <= 0) {
                        usage();
                    }
                    props.put(v.substring(0, eq), v.substring(eq + 1));
                }
                default -> usage();
            }
        }
        if (input == null || output == null || !props.containsKey(StreamsConfig.APPLICATION_ID_CONFIG)
                || !props.containsKey(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG)) {
            usage();
        }

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.Long()))
                .groupByKey()
                .reduce(Long::sum, Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as(STORE)
                        .withKeySerde(Serdes.String())
                        .withValueSerde(Serdes.Long()))
                .toStream()
                .to(output, Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.setStateListener((newState, oldState) -> event("state " + oldState + " " + newState));
        streams.setGlobalStateRestoreListener(new StateRestoreListener() {
            @Override
            public void onRestoreStart(TopicPartition tp, String store, long start, long end) {
                event("restore-start " + tp.topic() + " " + tp.partition() + " " + store + " " + start + " " + end);
            }

            @Override
            public void onBatchRestored(TopicPartition tp, String store, long batchEnd, long n) {
            }

            @Override
            public void onRestoreEnd(TopicPartition tp, String store, long total) {
                event("restore-end " + tp.topic() + " " + tp.partition() + " " + store + " " + total);
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            event("error " + String.valueOf(e).replace('\n', ' '));
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });

        streams.start();
        event("started");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            if (line.trim().equals("stop")) {
                break;
            }
        }
        boolean failed = streams.state() == KafkaStreams.State.ERROR;
        boolean closed = streams.close(Duration.ofSeconds(60));
        event("closed");
        System.exit(failed || !closed ? 1 : 0);
    }
}
