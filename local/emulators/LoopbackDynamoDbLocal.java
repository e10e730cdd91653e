/*
 * DynamoDB Local on 127.0.0.1 only. DynamoDB Local has no option for its listen address and its Jetty server
 * binds every interface; this starts the same server from the same arguments and sets the host of its one
 * connector before it starts. Run in Java's source-file mode (JDK 11+, needs the jdk.compiler module):
 *   java -cp DynamoDBLocal.jar LoopbackDynamoDbLocal.java -inMemory -sharedDb -port 8000
 *
 * With -DexitWhenStdinCloses=true it also exits when its standard input reaches its end: the process that started
 * it holds the other end of that pipe, and the pipe closes however that process ends, kill -9 included. So no
 * emulator outlives its parent, and the next start never finds a second JVM on the same files.
 */
import com.amazonaws.services.dynamodbv2.local.main.ServerRunner;
import com.amazonaws.services.dynamodbv2.local.server.DynamoDBProxyServer;
import java.io.IOException;
import java.lang.reflect.Field;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

public class LoopbackDynamoDbLocal {
  public static void main(String[] args) throws Exception {
    if (Boolean.getBoolean("exitWhenStdinCloses")) {
      Thread watchdog = new Thread(() -> {
        try {
          while (System.in.read() != -1) {}
        } catch (IOException e) {
          // A broken pipe is a closed one.
        }
        System.exit(0);
      }, "exit-with-parent");
      watchdog.setDaemon(true);
      watchdog.start();
    }
    DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
    Field field = DynamoDBProxyServer.class.getDeclaredField("server");
    field.setAccessible(true);
    Server server = (Server) field.get(proxy);
    for (Connector connector : server.getConnectors()) ((ServerConnector) connector).setHost("127.0.0.1");
    proxy.start();
  }
}
