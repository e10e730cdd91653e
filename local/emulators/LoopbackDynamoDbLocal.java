/*
 * DynamoDB Local on 127.0.0.1 only. DynamoDB Local has no option for its listen address and its Jetty server
 * binds every interface; this starts the same server from the same arguments and sets the host of its one
 * connector before it starts. Run in Java's source-file mode (JDK 11+, needs the jdk.compiler module):
 *   java -cp DynamoDBLocal.jar LoopbackDynamoDbLocal.java -inMemory -sharedDb -port 8000
 */
import com.amazonaws.services.dynamodbv2.local.main.ServerRunner;
import com.amazonaws.services.dynamodbv2.local.server.DynamoDBProxyServer;
import java.lang.reflect.Field;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

public class LoopbackDynamoDbLocal {
  public static void main(String[] args) throws Exception {
    DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
    Field field = DynamoDBProxyServer.class.getDeclaredField("server");
    field.setAccessible(true);
    Server server = (Server) field.get(proxy);
    for (Connector connector : server.getConnectors()) ((ServerConnector) connector).setHost("127.0.0.1");
    proxy.start();
  }
}
