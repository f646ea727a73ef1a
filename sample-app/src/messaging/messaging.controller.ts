import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { MessagingService, type SendMessageInput } from './messaging.service.js';

@Controller()
export class MessagingController {
  constructor(private readonly messaging: MessagingService) {}

  @Post('messages')
  @HttpCode(202)
  send(@Body() body: SendMessageInput): Promise<unknown> {
    return this.messaging.sendMessage({ to: String(body?.to ?? ''), text: String(body?.text ?? '') });
  }
}
